package menu

import (
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/recent"
)

// Catalog is the menu service's data: restaurants, their menus, and the
// popular-dishes list. Replicas of the service share one Catalog. It is
// safe for concurrent use; the zero value is not usable, call NewCatalog
// or DefaultCatalog.
type Catalog struct {
	mu          sync.RWMutex
	restaurants []fooddelivery.Restaurant
	menus       map[string][]fooddelivery.Dish // by restaurant id
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{menus: map[string][]fooddelivery.Dish{}}
}

// Add adds restaurant r with its dishes (prices in cents), replacing any
// restaurant with the same id. Dish ids should be unique across the whole
// catalog, as recommendations and the popular list name dishes without
// their restaurant.
func (c *Catalog) Add(r fooddelivery.Restaurant, dishes ...fooddelivery.Dish) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.menus[r.ID]; ok {
		c.restaurants = slices.DeleteFunc(c.restaurants, func(x fooddelivery.Restaurant) bool { return x.ID == r.ID })
	}
	c.restaurants = append(c.restaurants, r)
	c.menus[r.ID] = slices.Clone(dishes)
}

// Restaurants returns every restaurant in the order they were added.
func (c *Catalog) Restaurants() []fooddelivery.Restaurant {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.restaurants)
}

// Menu returns the menu of restaurant id; ok is false for an unknown id.
func (c *Catalog) Menu(id string) (m fooddelivery.Menu, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	dishes, ok := c.menus[id]
	if !ok {
		return fooddelivery.Menu{}, false
	}
	return fooddelivery.Menu{RestaurantID: id, Dishes: slices.Clone(dishes)}, true
}

// SetPrice changes the price (in cents) of dish dishID of restaurant
// restaurantID, as a restaurant does between a cached menu and checkout.
// It reports whether the dish exists.
func (c *Catalog) SetPrice(restaurantID, dishID string, priceCents int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dishes := c.menus[restaurantID]
	for i := range dishes {
		if dishes[i].ID == dishID {
			dishes[i].PriceCents = priceCents
			return true
		}
	}
	return false
}

// Popular returns the popular-dishes list: the first dish of every
// restaurant, in restaurant order. It is the same for every user, which is
// what makes it a fallback for personal recommendations.
func (c *Catalog) Popular() []fooddelivery.Dish {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []fooddelivery.Dish
	for _, r := range c.restaurants {
		if d := c.menus[r.ID]; len(d) > 0 {
			out = append(out, d[0])
		}
	}
	return out
}

// Recommendations returns up to 3 distinct dishes picked for user: a pure
// function of the user and the catalog (fooddelivery.Draw with seed 0), so
// the same user always gets the same picks.
func (c *Catalog) Recommendations(user string) []fooddelivery.Dish {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var all []fooddelivery.Dish
	for _, r := range c.restaurants {
		all = append(all, c.menus[r.ID]...)
	}
	var out []fooddelivery.Dish
	for attempt := 0; len(all) > 0 && len(out) < 3; attempt++ {
		i := int(fooddelivery.Draw(0, user, attempt) * float64(len(all)))
		out = append(out, all[i])
		all = slices.Delete(all, i, i+1)
	}
	return out
}

// DefaultCatalog returns the workshop's six restaurants with 3 to 5 dishes
// each (made-up names, prices in cents). Each call returns a new Catalog.
func DefaultCatalog() *Catalog {
	c := NewCatalog()
	type R = fooddelivery.Restaurant
	type D = fooddelivery.Dish
	c.Add(R{ID: "luigis", Name: "Luigi's Wood Oven", Cuisine: "pizza"},
		D{ID: "luigis-margherita", Name: "Margherita", PriceCents: 1150},
		D{ID: "luigis-diavola", Name: "Diavola", PriceCents: 1350},
		D{ID: "luigis-funghi", Name: "Funghi e Tartufo", PriceCents: 1490},
		D{ID: "luigis-tiramisu", Name: "Tiramisu", PriceCents: 650})
	c.Add(R{ID: "sakura", Name: "Sakura Counter", Cuisine: "japanese"},
		D{ID: "sakura-salmon-don", Name: "Salmon Don", PriceCents: 1590},
		D{ID: "sakura-tonkotsu", Name: "Tonkotsu Ramen", PriceCents: 1420},
		D{ID: "sakura-gyoza", Name: "Pork Gyoza (6)", PriceCents: 720})
	c.Add(R{ID: "taco-loco", Name: "Taco Loco", Cuisine: "mexican"},
		D{ID: "taco-loco-al-pastor", Name: "Tacos al Pastor (3)", PriceCents: 990},
		D{ID: "taco-loco-burrito", Name: "Bean Burrito", PriceCents: 1090},
		D{ID: "taco-loco-elote", Name: "Elote", PriceCents: 450},
		D{ID: "taco-loco-churros", Name: "Churros", PriceCents: 550})
	c.Add(R{ID: "green-bowl", Name: "The Green Bowl", Cuisine: "salads"},
		D{ID: "green-bowl-falafel", Name: "Falafel Bowl", PriceCents: 1250},
		D{ID: "green-bowl-quinoa", Name: "Quinoa and Beet Salad", PriceCents: 1190},
		D{ID: "green-bowl-smoothie", Name: "Mango Smoothie", PriceCents: 590})
	c.Add(R{ID: "curry-house", Name: "Curry House Madras", Cuisine: "indian"},
		D{ID: "curry-house-korma", Name: "Chicken Korma", PriceCents: 1450},
		D{ID: "curry-house-dal", Name: "Dal Makhani", PriceCents: 1150},
		D{ID: "curry-house-naan", Name: "Garlic Naan", PriceCents: 350},
		D{ID: "curry-house-lassi", Name: "Mango Lassi", PriceCents: 420},
		D{ID: "curry-house-samosa", Name: "Samosas (2)", PriceCents: 590})
	c.Add(R{ID: "burger-barn", Name: "Burger Barn", Cuisine: "burgers"},
		D{ID: "burger-barn-classic", Name: "Classic Cheeseburger", PriceCents: 1290},
		D{ID: "burger-barn-veggie", Name: "Mushroom Veggie Burger", PriceCents: 1240},
		D{ID: "burger-barn-fries", Name: "Rosemary Fries", PriceCents: 490})
	return c
}

// MaxReviewChars is the longest review text accepted, in characters
// (Unicode code points).
const MaxReviewChars = 2000

// MaxReviews is how many reviews a ReviewBook keeps: the 10,000 most
// recent, for every restaurant together.
const MaxReviews = 10_000

// ReviewBook stores reviews, in memory (a restart loses them): the
// MaxReviews most recent. Replicas of the menu service share one. It is
// safe for concurrent use; the zero value is an empty book, ready to use.
type ReviewBook struct {
	mu      sync.Mutex
	seq     int
	reviews *recent.List[fooddelivery.Review]
}

// kept returns b.reviews, made on first use.
func (b *ReviewBook) kept() *recent.List[fooddelivery.Review] {
	if b.reviews == nil {
		b.reviews = recent.NewList[fooddelivery.Review](MaxReviews)
	}
	return b.reviews
}

// NewReviewBook returns an empty review book.
func NewReviewBook() *ReviewBook { return &ReviewBook{} }

// Add stores r under a fresh id ("rev-1", "rev-2", ...) and returns it as
// stored, dropping the oldest review when the book is full. It does not
// validate r; the service does.
func (b *ReviewBook) Add(r fooddelivery.Review) fooddelivery.Review {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	r.ID = "rev-" + itoa(b.seq)
	b.kept().Add(r)
	return r
}

// For returns the reviews of restaurant restaurantID, oldest first (empty,
// not nil, when there are none).
func (b *ReviewBook) For(restaurantID string) []fooddelivery.Review {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []fooddelivery.Review{}
	b.kept().Each(func(r fooddelivery.Review) {
		if r.RestaurantID == restaurantID {
			out = append(out, r)
		}
	})
	return out
}

// Len returns how many reviews are stored, for every restaurant together.
func (b *ReviewBook) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kept().Len()
}

// validateReview returns why r cannot be stored, or "".
func validateReview(r fooddelivery.Review) string {
	switch {
	case r.User == "":
		return "user is required"
	case r.Stars < 1 || r.Stars > 5:
		return "stars must be between 1 and 5, got " + itoa(r.Stars)
	case utf8.RuneCountInString(r.Text) > MaxReviewChars:
		return "text is longer than " + itoa(MaxReviewChars) + " characters"
	}
	return ""
}
